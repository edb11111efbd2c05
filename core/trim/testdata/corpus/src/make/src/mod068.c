#include <stdio.h>

int mod068(int x)
{
    int unused_68 = 68;
    return x + 68;
}
