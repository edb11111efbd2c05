#include <stdio.h>

int mod018(int x)
{
    int unused_18 = 18;
    return x + 18;
}
