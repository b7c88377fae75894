"""The call console: its routes, operator and browser-call auth, the live event feed, and the pages' static files."""
