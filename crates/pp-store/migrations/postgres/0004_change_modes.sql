-- A file's mode and owner before a change, as SQLite's 0013: a revert gives the file it
-- writes again these permission bits and, where the process may, this owner. NULL on
-- rows recorded before: those reverts keep the usual mode.
ALTER TABLE changes ADD COLUMN before_mode BIGINT CHECK (before_mode IS NULL OR
    before_mode BETWEEN 0 AND 4095);
ALTER TABLE changes ADD COLUMN before_uid BIGINT CHECK (before_uid IS NULL OR before_uid >= 0);
ALTER TABLE changes ADD COLUMN before_gid BIGINT CHECK (before_gid IS NULL OR before_gid >= 0);
