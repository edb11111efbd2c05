#include <stdio.h>

int mod114(int x)
{
    int unused_114 = 114;
    return x + 114;
}
