#include <stdio.h>

int mod098(int x)
{
    int unused_98 = 98;
    return x + 98;
}
