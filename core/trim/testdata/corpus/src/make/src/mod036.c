#include <stdio.h>

int mod036(int x)
{
    int unused_36 = 36;
    return x + 36;
}
