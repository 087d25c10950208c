"""switchyard: typed AI workflows, compiled to AWS Step Functions, run on AWS or on one machine."""

__version__ = "0.1.0"
