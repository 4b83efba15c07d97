// Most of the program's time: several times faster at -O2 than at -O0.
double heavy(long n) {
  double s = 0.0;
  for (long i = 0; i < n; ++i) s += (i % 7) * 0.5;
  return s;
}
