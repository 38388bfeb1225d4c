"""jcalib.forecasters"""

__all__: list[str] = []
