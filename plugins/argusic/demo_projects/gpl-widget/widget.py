"""gpl-widget: prints a text widget."""

print("[ widget ]")
