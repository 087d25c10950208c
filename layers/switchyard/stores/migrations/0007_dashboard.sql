-- The dashboard: keyset pages of runs newest first (all runs, by status, by workflow), run ids
-- found by prefix, a run's child runs; and a NOTIFY on `switchyard_dashboard` from every
-- change to a run, step or gate record, sent when the writer's transaction commits (the engine,
-- the gate store, the recorder on AWS: whoever writes, the open pages hear of it).

CREATE INDEX workflow_runs_page ON workflow_runs (started_at DESC, execution_id DESC);
CREATE INDEX workflow_runs_page_by_status
    ON workflow_runs (status, started_at DESC, execution_id DESC);
CREATE INDEX workflow_runs_page_by_workflow
    ON workflow_runs (workflow, started_at DESC, execution_id DESC);
CREATE INDEX workflow_runs_run_id_prefix ON workflow_runs (run_id text_pattern_ops);
CREATE INDEX workflow_runs_children ON workflow_runs (parent_execution_id)
    WHERE parent_execution_id IS NOT NULL;

-- Payloads are small (ids and a status, far below NOTIFY's 8000 bytes); identical ones sent in
-- one transaction arrive once.
CREATE FUNCTION switchyard_dashboard_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'workflow_runs' THEN
        PERFORM pg_notify('switchyard_dashboard', json_build_object(
            't', 'run', 'e', NEW.execution_id, 'r', NEW.run_id, 's', NEW.status)::text);
    ELSIF TG_TABLE_NAME = 'task_runs' THEN
        PERFORM pg_notify('switchyard_dashboard', json_build_object(
            't', 'step', 'e', NEW.execution_id, 'k', left(NEW.step_id, 200), 'i', left(NEW.item, 40),
            's', NEW.status)::text);
    ELSE
        PERFORM pg_notify('switchyard_dashboard', json_build_object(
            't', 'gate', 'r', NEW.run_id, 'k', left(NEW.step_id, 200), 's', NEW.status)::text);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER workflow_runs_dashboard AFTER INSERT OR UPDATE ON workflow_runs
    FOR EACH ROW EXECUTE FUNCTION switchyard_dashboard_notify();
CREATE TRIGGER task_runs_dashboard AFTER INSERT OR UPDATE ON task_runs
    FOR EACH ROW EXECUTE FUNCTION switchyard_dashboard_notify();
CREATE TRIGGER gates_dashboard AFTER INSERT OR UPDATE ON gates
    FOR EACH ROW EXECUTE FUNCTION switchyard_dashboard_notify();
