"""Planning: executor-sizing rules, the matched plan of launches and points, dry-run shrinking, its table."""
