// A few microseconds of work: its flags cannot change the program's time.
double light(long n) {
  double s = 0.0;
  for (long i = 0; i < n; ++i) s += (i % 5) * 0.25;
  return s;
}
