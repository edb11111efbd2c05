#include <stdio.h>

int mod132(int x)
{
    int unused_132 = 132;
    return x + 132;
}
