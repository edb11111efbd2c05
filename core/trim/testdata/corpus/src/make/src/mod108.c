#include <stdio.h>

int mod108(int x)
{
    int unused_108 = 108;
    return x + 108;
}
