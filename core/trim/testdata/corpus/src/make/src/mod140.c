#include <stdio.h>

int mod140(int x)
{
    int unused_140 = 140;
    return x + 140;
}
