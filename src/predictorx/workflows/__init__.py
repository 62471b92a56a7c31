"""The workflow engine, pure: BPMN diagrams loaded and run (SpiffWorkflow), DMN decision tables,
ODRL policies, PROV-O records, the classifier's table, bean files and diagram drawings. It knows no
database, service or server (an import contract in pyproject.toml); the use cases that keep
instances, beans and classifications in the database are in service/ (workflow_*.py, beans.py,
bean_rules.py, classification.py)."""
