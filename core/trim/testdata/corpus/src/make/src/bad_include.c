#include "config.h"

int version(void) { return CONFIG_VERSION; }
