"""manifest -> responses -> scores -> reports."""
