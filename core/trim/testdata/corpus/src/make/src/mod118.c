#include <stdio.h>

int mod118(int x)
{
    int unused_118 = 118;
    return x + 118;
}
