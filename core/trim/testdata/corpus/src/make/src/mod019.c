#include <stdio.h>

int mod019(int x)
{
    return x + 19;
}
