-- Up Migration

-- A whole workspace can be erased (offboarding a customer; docs/operations.md): its receipt names the
-- workspace alone. The erasure removes every row that carries the workspace's name — its feed's position
-- counter too, since the name is then free for a new customer — and finds its quarantined bodies and
-- tombstones by that name.
ALTER TABLE erasures DROP CONSTRAINT erasures_scope_check,
  ADD CONSTRAINT erasures_scope_check CHECK (scope IN ('album', 'message', 'conversation', 'workspace'));
CREATE INDEX quarantine_workspace ON quarantine (workspace);
CREATE INDEX tombstones_workspace ON tombstones (workspace);

-- Down Migration
DROP INDEX tombstones_workspace, quarantine_workspace;
DELETE FROM erasures WHERE scope = 'workspace';
ALTER TABLE erasures DROP CONSTRAINT erasures_scope_check,
  ADD CONSTRAINT erasures_scope_check CHECK (scope IN ('album', 'message', 'conversation'));
