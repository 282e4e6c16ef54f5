"""ppdm: privacy-preserving publishing of tabular microdata.

Anonymize a table x into a release z with the techniques of Fletcher & Islam
(Forest Framework), Islam & Brankovic (Framework), GADP, Dowd, Xu & Zhang
(random substitution) and Senavirathne & Torra (rounding), and measure what z
still tells analysts (rule retention, forest structure, information loss) and
how exposed its people are (record linkage, interval disclosure, SERS).
"""

from ppdm.data.schema import Schema
from ppdm.errors import PPDMError

__version__ = "0.1.0"
__all__ = ["Schema", "PPDMError", "__version__"]
