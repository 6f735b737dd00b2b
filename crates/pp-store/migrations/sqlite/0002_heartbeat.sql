-- Running tasks carry a heartbeat from the process running them, so a process starting
-- up interrupts only tasks whose runner stopped (not a live CLI run or another server).
ALTER TABLE tasks ADD COLUMN heartbeat_at INTEGER;
