"""jcalib.natures"""

__all__: list[str] = []
