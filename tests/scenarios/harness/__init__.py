"""Run scenario files (a workflow, an input, scripted step results, expectations) on an
interpreter: moto's Step Functions (independent of us) or switchyard's own engine."""
