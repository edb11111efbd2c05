#include <stdio.h>

int mod136(int x)
{
    int unused_136 = 136;
    return x + 136;
}
