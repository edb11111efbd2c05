#include <stdio.h>

int mod074(int x)
{
    int unused_74 = 74;
    return x + 74;
}
