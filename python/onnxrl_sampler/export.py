class ExportCheckError(Exception): pass
def export_policy(): pass
