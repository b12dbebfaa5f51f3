"""The web UI (``videoatlas ui``) and the HTML run report (``videoatlas report``): one renderer for both."""
