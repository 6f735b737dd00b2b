-- A file's mode and owner before a change (issue: a deleted 0600 file came back 0644).
-- A revert gives the file it writes again these permission bits and, where the process
-- may, this owner. NULL on rows recorded before (and where nothing was there): those
-- reverts keep the usual mode, as before.
ALTER TABLE changes ADD COLUMN before_mode INTEGER CHECK (before_mode IS NULL OR
    before_mode BETWEEN 0 AND 4095);
ALTER TABLE changes ADD COLUMN before_uid INTEGER CHECK (before_uid IS NULL OR before_uid >= 0);
ALTER TABLE changes ADD COLUMN before_gid INTEGER CHECK (before_gid IS NULL OR before_gid >= 0);
