"""What the service keeps: its database tables, uploaded files, keys and per-document locks."""
