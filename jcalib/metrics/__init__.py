"""jcalib.metrics"""

__all__: list[str] = []
