"""Prior baselines of paper §4 / Table 2: TSH (``tsh``) and KG-FM (``kgfm``)."""
