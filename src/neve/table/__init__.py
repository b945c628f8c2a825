"""Tables: the immutable view of one metadata version, scans, transactions and the
builders that plan changes to a table."""
