/* load_child.c: placeholder for the time_to_load child. */
int main(void) { return 0; }
