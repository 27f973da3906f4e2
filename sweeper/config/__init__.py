"""Configuration: a grid file read within bounds (``reader``) and validated into a frozen ``Grid`` (``grid``)."""
