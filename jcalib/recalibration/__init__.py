"""jcalib.recalibration"""

__all__: list[str] = []
