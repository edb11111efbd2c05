#include <stdio.h>

int mod051(int x)
{
    return x + 51;
}
