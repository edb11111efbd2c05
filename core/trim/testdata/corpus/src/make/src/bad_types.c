#include <string.h>

struct point { int x, y; };

int norm(struct point p)
{
    char *name = p.x;
    return strlen(name) + p.z;
}
