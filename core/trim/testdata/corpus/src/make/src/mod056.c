#include <stdio.h>

int mod056(int x)
{
    int unused_56 = 56;
    return x + 56;
}
