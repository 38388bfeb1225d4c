"""jcalib.datasets"""

__all__: list[str] = []
