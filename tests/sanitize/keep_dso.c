/* keep_dso.c: linked into every executable of the sanitizer build only (CMakeLists.txt,
 * AS_SANITIZE). dlclose is a no-op, so the shared objects that libraries load and unload at
 * run time (Open MPI's MCA components, closed again in MPI_Finalize) stay mapped until the
 * process exits: LeakSanitizer then names them in its reports (instead of "<unknown module>"),
 * and tests/sanitize/lsan.supp can suppress their leaks by library name. The objects would be
 * unmapped at exit anyway. */
int dlclose(void *handle);

int dlclose(void *handle) {
  (void)handle;
  return 0;
}
