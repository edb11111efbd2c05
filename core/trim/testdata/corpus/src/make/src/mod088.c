#include <stdio.h>

int mod088(int x)
{
    int unused_88 = 88;
    return x + 88;
}
