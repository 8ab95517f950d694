-- Up Migration

-- A whole workspace can be erased (offboarding a customer; docs/operations.md): its receipt names the
-- workspace alone. The erasure removes every row that carries the workspace's name — its feed's position
-- counter too, since the name is then free for a new customer — and finds its tombstones by that name
-- (its quarantined bodies by quarantine_workspace, which the event links' migration made).
ALTER TABLE erasures DROP CONSTRAINT erasures_scope_check,
  ADD CONSTRAINT erasures_scope_check CHECK (scope IN ('album', 'message', 'conversation', 'workspace'));
CREATE INDEX tombstones_workspace ON tombstones (workspace);

-- Down Migration
DROP INDEX tombstones_workspace;
DELETE FROM erasures WHERE scope = 'workspace';
ALTER TABLE erasures DROP CONSTRAINT erasures_scope_check,
  ADD CONSTRAINT erasures_scope_check CHECK (scope IN ('album', 'message', 'conversation'));
