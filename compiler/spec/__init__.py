"""The spec language: TOML -> frozen pydantic models, with file/line/key-path errors."""
