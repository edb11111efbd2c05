#include <stdio.h>

int mod042(int x)
{
    int unused_42 = 42;
    return x + 42;
}
