#include <stdio.h>

int mod119(int x)
{
    return x + 119;
}
