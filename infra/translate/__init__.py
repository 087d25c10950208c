"""Pure translations from the workflow format to what AWS services accept (no CDK here)."""
