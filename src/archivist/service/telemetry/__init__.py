"""What an operator watches: Prometheus metrics, request ids and JSON log lines.

Nothing recorded here carries tenant data: metric labels are route templates, methods,
status codes and job states; log records carry the request id, never a key, a knowledge
base's documents or a search's query.
"""
