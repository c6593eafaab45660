"""The runners behind one contract: the serial reference, the parallel algorithm (in process and on
Spark)."""
