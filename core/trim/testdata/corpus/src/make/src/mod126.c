#include <stdio.h>

int mod126(int x)
{
    int unused_126 = 126;
    return x + 126;
}
