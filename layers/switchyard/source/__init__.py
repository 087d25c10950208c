"""Reading workflow files: YAML or JSON with a line number for every node."""

from switchyard.source.locations import DocPath, Locations, format_path
from switchyard.source.yaml_loader import LoadedDocument, load_document, load_file

__all__ = ["DocPath", "LoadedDocument", "Locations", "format_path", "load_document", "load_file"]
