"""spec -> manifest. Pure and deterministic; never imports benchc.runtime."""
