#include <stdio.h>

int mod043(int x)
{
    return x + 43;
}
