#include <stdio.h>

int mod031(int x)
{
    return x + 31;
}
