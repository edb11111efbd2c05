#include <stdio.h>

int mod116(int x)
{
    int unused_116 = 116;
    return x + 116;
}
